package ccrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/ccrun/ccrun/permission"
)

// config is what the root package reads from ccrun.json itself; the
// allowlist and the policy members are read by package permission.
type config struct {
	Env struct {
		// Pass names host variables that reach @shell tools although the
		// default filter would hold them back.
		Pass []string `json:"pass"`
	} `json:"env"`
}

func loadConfig(dir string) (*config, error) {
	path := permission.ProjectFile(dir)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &config{}, nil
	}
	if err != nil {
		return nil, err
	}
	var c config
	if err := json.Unmarshal(data, &c); err != nil {
		// LoadProject has already checked the syntax; this is a type error.
		return nil, fmt.Errorf("%s: env: %v: %w", path, err, permission.ErrInvalidConfig)
	}
	return &c, nil
}
