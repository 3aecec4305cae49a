package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartServer starts a NATS server with JetStream in this process,
// listening on a free port of the loopback interface, its streams kept
// in dir (so that a run started again finds its jobs and results). It
// admits only clients that give a token drawn here: url, which carries
// it, is what this process and its workers connect with (other users of
// the machine can reach the port, not the queues). Shutdown stops it.
func StartServer(dir string) (s *server.Server, url string, err error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, "", err
	}
	token := hex.EncodeToString(b[:])
	s, err = server.NewServer(&server.Options{
		Authorization: token,
		ServerName:    "loom-embedded",
		Host:          "127.0.0.1",
		Port:          -1,
		JetStream:     true,
		StoreDir:      dir,
		NoSigs:        true,
		NoLog:         true,
		MaxPayload:    MaxPayload,
	})
	if err != nil {
		return nil, "", fmt.Errorf("cluster: embedded server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, "", errors.New("cluster: the embedded server did not start within 30 s")
	}
	return s, strings.Replace(s.ClientURL(), "nats://", "nats://"+token+"@", 1), nil
}
