// Receiver serves a push URL with net/http: each push is stored in PostgreSQL, acknowledged, and
// then confirmed by the receipt callback.
package main

import (
	"context"
	"database/sql"
	"log"
	"net/http"
	"os"

	earshot "github.com/earshot/earshot/kits/go"
	_ "github.com/lib/pq" // any database/sql driver; SQLite's with Dialect: earshot.SQLite
)

// upsert keeps the latest state of each recording, and a deleted one deleted (a tombstone).
const upsert = `INSERT INTO recordings (audio_id, title, data, occurred_at, deleted) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (audio_id) DO UPDATE SET title = $2, data = $3, occurred_at = $4, deleted = $5
	WHERE NOT recordings.deleted AND recordings.occurred_at <= $4`

func main() {
	db, err := sql.Open("postgres", os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE IF NOT EXISTS recordings (audio_id text PRIMARY KEY, title text NOT NULL,
		data text NOT NULL, occurred_at timestamptz NOT NULL, deleted boolean NOT NULL)`)
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := earshot.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	client, err := earshot.NewClient(cfg)
	if err != nil {
		log.Fatal(err)
	}
	outbox, err := earshot.OpenOutbox(context.Background(), earshot.OutboxConfig{
		DB: db, Dialect: earshot.Postgres, Confirm: client.ConfirmReceipt,
	})
	if err != nil {
		log.Fatal(err)
	}
	receiver, err := earshot.NewReceiver(earshot.ReceiverConfig{
		Secrets: map[int]string{cfg.KeyVersion: cfg.Secret}, // add the previous one during a key rotation
		Outbox:  outbox,
		Store: func(ctx context.Context, event *earshot.PushEvent) error {
			_, err := db.ExecContext(ctx, upsert, event.AudioID, event.Data.Title, string(event.Data.Raw),
				event.OccurredAt, event.Deleted())
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle(earshot.DefaultPushPath, receiver)
	log.Fatal(http.ListenAndServe(os.Getenv("LISTEN_ADDR"), nil))
}
