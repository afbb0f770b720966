// Receiver serves a push URL with net/http: each push is stored in PostgreSQL, acknowledged, and
// then confirmed by the receipt callback. SIGTERM (or Ctrl-C) stops it cleanly.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
	_ "github.com/lib/pq" // PostgreSQL's driver; for SQLite see "Other databases"
)

// upsert keeps the latest state of each recording, and a deleted one deleted (a tombstone).
const upsert = `INSERT INTO earshot_recordings (audio_id, title, data, occurred_at, deleted) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (audio_id) DO UPDATE SET title = $2, data = $3, occurred_at = $4, deleted = $5
	WHERE NOT earshot_recordings.deleted AND earshot_recordings.occurred_at <= $4`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	db, err := sql.Open("postgres", envOr("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"))
	if err != nil {
		log.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS earshot_recordings (audio_id text PRIMARY KEY,
		title text NOT NULL, data text NOT NULL, occurred_at timestamptz NOT NULL, deleted boolean NOT NULL)`)
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
	outbox, err := earshot.OpenOutbox(ctx, earshot.OutboxConfig{
		DB: db, Dialect: earshot.Postgres, Confirm: client.ConfirmReceipt, ConfirmErasure: client.ConfirmErasure,
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
			if err == nil {
				fmt.Println("stored", event.AudioID, event.EventType)
			}
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	serve(ctx, envOr("LISTEN_ADDR", "127.0.0.1:8090"), receiver, outbox)
}

// serve answers pushes until ctx ends, then lets answers and callbacks in flight finish (10 s at most).
func serve(ctx context.Context, addr string, receiver http.Handler, outbox *earshot.Outbox) {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(earshot.DefaultPushPath, receiver)
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := server.Serve(listener); !errors.Is(err, http.ErrServerClosed) {
			log.Fatal(err)
		}
	}()
	fmt.Printf("listening on http://%s%s\n", listener.Addr(), earshot.DefaultPushPath)
	<-ctx.Done()
	done, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = server.Shutdown(done)
	_ = outbox.Close(done)
}

func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}
