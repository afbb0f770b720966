// Command killreceiver is a push receiver whose receipt callbacks never go out: its Confirm prints
// "BLOCKED <audioId>" (its ConfirmErasure "ERASURE BLOCKED <audioId>") and waits for ever. The kill
// tests push to it, SIGKILL it between the answer and the callback, and check that a fresh receiver on
// the same database sends the callback.
//
// It reads DATABASE_URL and EARSHOT_KEY_VERSION / EARSHOT_SECRET, and prints "LISTENING <push URL>".
package main

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	earshot "github.com/earshot/earshot/kits/go"
	_ "github.com/lib/pq"
)

func main() {
	db, err := sql.Open("postgres", os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := earshot.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	outbox, err := earshot.OpenOutbox(context.Background(), earshot.OutboxConfig{
		DB: db, Dialect: earshot.Postgres,
		Confirm:        blocked("BLOCKED "),
		ConfirmErasure: blocked("ERASURE BLOCKED "),
		AttemptTimeout: time.Second, AnswerGrace: 300 * time.Millisecond, PollInterval: 100 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	receiver, err := earshot.NewReceiver(earshot.ReceiverConfig{
		Secrets: map[int]string{cfg.KeyVersion: cfg.Secret},
		Outbox:  outbox,
		Store:   func(context.Context, *earshot.PushEvent) error { return nil },
	})
	if err != nil {
		log.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(earshot.DefaultPushPath, receiver)
	fmt.Printf("LISTENING http://%s%s\n", listener.Addr(), earshot.DefaultPushPath)
	log.Fatal(http.Serve(listener, mux))
}

// blocked is a callback that prints its line and waits until its attempt is abandoned.
func blocked(line string) func(ctx context.Context, audioID string) error {
	return func(ctx context.Context, audioID string) error {
		fmt.Printf("%s%s\n", line, audioID)
		<-ctx.Done()
		return ctx.Err()
	}
}
