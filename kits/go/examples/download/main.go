// Download saves a recording's audio to a file: resumed after a cut, checked against the link's digest.
//
//	go run ./download AUDIO_ID FILE
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"

	earshot "github.com/earshot/earshot/kits/go"
)

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: download AUDIO_ID FILE")
	}
	cfg, err := earshot.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	client, err := earshot.NewClient(cfg)
	if err != nil {
		log.Fatal(err)
	}
	// Ctrl-C keeps FILE.part: run the same command again to go on from it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	audio, err := client.DownloadAudio(ctx, os.Args[1], os.Args[2], earshot.DownloadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d bytes of %s, verified %v, sha256 %s\n",
		os.Args[2], audio.Bytes, audio.ContentType, audio.Verified, audio.SHA256)
}
