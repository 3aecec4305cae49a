package cluster

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartServer starts a NATS server with JetStream in this process,
// listening on a free port of the loopback interface, its streams kept
// in dir (so that a run started again finds its jobs and results). Its
// ClientURL is what workers connect to; Shutdown stops it.
func StartServer(dir string) (*server.Server, error) {
	s, err := server.NewServer(&server.Options{
		ServerName: "loom-embedded",
		Host:       "127.0.0.1",
		Port:       -1,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: MaxPayload,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: embedded server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, errors.New("cluster: the embedded server did not start within 30 s")
	}
	return s, nil
}
