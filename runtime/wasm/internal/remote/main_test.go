package remote

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if sock := os.Getenv(peerTestEnv); sock != "" {
		os.Exit(peerMain(sock))
	}
	os.Exit(m.Run())
}
