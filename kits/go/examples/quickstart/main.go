// Quickstart lists every recording of your enterprise, newest first.
package main

import (
	"context"
	"fmt"
	"log"

	earshot "github.com/earshot/earshot/kits/go"
)

func main() {
	cfg, err := earshot.ConfigFromEnv() // EARSHOT_ENTERPRISE_ID, EARSHOT_SECRET; see the table below
	if err != nil {
		log.Fatal(err)
	}
	client, err := earshot.NewClient(cfg)
	if err != nil {
		log.Fatal(err)
	}
	err = client.EachAudioPage(context.Background(), earshot.Filter{Size: 50}, func(page *earshot.AudioPage) error {
		for _, item := range page.Items {
			fmt.Printf("%s  %s  %s\n", item.AudioID, item.Data.DeviceUID, item.Data.Title)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
