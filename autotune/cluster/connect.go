package cluster

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Security says how a tuner or a worker proves who it is to the server
// and checks the server: a user and password or a token may instead be
// in the URL (nats://user:pass@host:4222); a tls:// URL (or any of the
// TLS files) makes the connection TLS.
type Security struct {
	Creds string // a NATS credentials file (JWT and nkey seed)
	NKey  string // a file holding an nkey seed
	// CA is a PEM file of the authorities the server's certificate must
	// chain to (default: the system's); Cert and Key a client
	// certificate, for servers that require one.
	CA, Cert, Key string
}

// Connect connects to the NATS server at url (several, comma separated,
// for a cluster) with sec, naming the connection name.
func Connect(rawURL, name string, sec Security) (*nats.Conn, error) {
	if rawURL == "" {
		return nil, errors.New("cluster: no server URL")
	}
	for k, u := range strings.Split(rawURL, ",") {
		// The messages name the URL without its password: the URL may
		// carry one, and the error may end up in a log.
		p, err := url.Parse(strings.TrimSpace(u))
		if err != nil {
			return nil, fmt.Errorf("cluster: server URL %d of the list does not parse (want nats://[user:password@]host:port)", k+1)
		}
		switch p.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return nil, fmt.Errorf("cluster: server URL %s: scheme %q, want nats://, tls://, ws:// or wss://", Redact(u), p.Scheme)
		}
	}
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second), nats.Timeout(10 * time.Second)}
	if sec.Creds != "" && sec.NKey != "" {
		return nil, errors.New("cluster: both a credentials file and an nkey file: give one")
	}
	if sec.Creds != "" {
		opts = append(opts, nats.UserCredentials(sec.Creds))
	}
	if sec.NKey != "" {
		o, err := nats.NkeyOptionFromSeed(sec.NKey)
		if err != nil {
			return nil, fmt.Errorf("cluster: nkey file %s: %v", sec.NKey, err)
		}
		opts = append(opts, o)
	}
	if sec.CA != "" {
		opts = append(opts, nats.RootCAs(sec.CA))
	}
	if (sec.Cert == "") != (sec.Key == "") {
		return nil, errors.New("cluster: a client certificate needs both its file and its key's")
	}
	if sec.Cert != "" {
		opts = append(opts, nats.ClientCert(sec.Cert, sec.Key))
	}
	if sec.CA != "" || sec.Cert != "" {
		opts = append(opts, nats.Secure())
	}
	nc, err := nats.Connect(rawURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: connecting to %s: %w", Redact(rawURL), err)
	}
	return nc, nil
}

// Redact returns a list of server URLs with their passwords and tokens
// hidden, for messages.
func Redact(raw string) string {
	var out []string
	for _, u := range strings.Split(raw, ",") {
		if p, err := url.Parse(strings.TrimSpace(u)); err != nil {
			u = "(an URL that does not parse)"
		} else if p.User != nil {
			u = p.Scheme + "://***@" + p.Host + p.Path
		}
		out = append(out, u)
	}
	return strings.Join(out, ",")
}
