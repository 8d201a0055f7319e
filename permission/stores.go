package permission

import (
	"errors"
	"io/fs"

	"github.com/ccrun/ccrun/permission/allowlist"
)

// OpenProject is LoadProject then SetProjectTrust without reading a file
// again: project is the settings layer LoadSettings read from path (nil
// when the file is absent), digest the Loosening digest of that read with
// the ccrun.local.json at localPath (ProjectLoosening), which t judges.
func OpenProject(path string, project *Settings, t allowlist.Trust, localPath, digest string) (*allowlist.ProjectAllowlist, error) {
	var data []byte
	if project != nil {
		data = project.text()
	}
	return allowlist.ParseProject(path, data, t, LooseningDigest(path, localPath), digest)
}

// SetProjectTrust makes p's entries count only while the project is
// trusted by t; localPath is the project's ccrun.local.json, whose
// loosening the digest covers too. It reads the file again.
func SetProjectTrust(p *allowlist.ProjectAllowlist, t allowlist.Trust, localPath string) error {
	return p.SetTrust(t, LooseningDigest(p.Path(), localPath))
}

// LooseningDigest returns how a project allowlist digests what the project
// loosens: the Digest of the ProjectLoosening of a ccrun.json text (read
// as the file at path; nil: no file) and of the ccrun.local.json at
// localPath ("": none), as it is on disk at the time.
func LooseningDigest(path, localPath string) allowlist.DigestFunc {
	return func(text []byte) (string, error) {
		var project, local *Settings
		if text != nil {
			s, err := ParseSettings(text, path, OriginProject)
			if err != nil {
				return "", err
			}
			project = s
		}
		if localPath != "" {
			s, err := LoadSettings(localPath, OriginLocal)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
			local = s
		}
		l, err := ProjectLoosening(project, local)
		if err != nil {
			return "", err
		}
		return l.Digest(), nil
	}
}
