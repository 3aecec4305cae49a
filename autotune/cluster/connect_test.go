package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their files and the TLS configuration a server serves them with.
func selfSigned(t *testing.T) (certFile string, cfg *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "loom test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	return certFile, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

// A server that asks for a password and TLS: the right URL and CA
// connect, a wrong password or an unknown authority do not.
func TestSecurity(t *testing.T) {
	ca, cfg := selfSigned(t)
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		Username: "tuner", Password: "s3cret", TLSConfig: cfg, TLS: true, TLSTimeout: 5})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	defer s.Shutdown()
	port := s.Addr().(*net.TCPAddr).Port
	url := func(pass string) string { return fmt.Sprintf("tls://tuner:%s@127.0.0.1:%d", pass, port) }
	nc, err := Connect(url("s3cret"), "test", Security{CA: ca})
	if err != nil {
		t.Fatalf("the right password and CA: %v", err)
	}
	nc.Close()
	if _, err := Connect(url("wrong"), "test", Security{CA: ca}); err == nil {
		t.Error("a wrong password connected")
	} else if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error shows the password: %v", err)
	}
	if _, err := Connect(url("s3cret"), "test", Security{}); err == nil {
		t.Error("a server certificate of an unknown authority was trusted")
	}
	if _, err := Connect(fmt.Sprintf("nats://127.0.0.1:%d", port), "test", Security{CA: ca}); err == nil {
		t.Error("no password connected")
	}
}
