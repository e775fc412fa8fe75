package r53api

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/healthroute/healthroute/internal/watch"
)

// MinSecretLen is the shortest secret access key accepted (AWS's are 40).
const MinSecretLen = 16

// ReadKeys reads an access key file: one ACCESS_KEY_ID SECRET_ACCESS_KEY pair per
// line; blank lines and lines starting with # are skipped. Each ID and each
// secret is given once: a change is recorded under the ID that signed it.
func ReadKeys(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	keys := map[string]string{}
	named := map[string]string{} // secret -> the key ID it was first given under
	n := 0
	for line := range strings.Lines(string(b)) {
		n++
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case len(f) != 2:
			return nil, fmt.Errorf("%s:%d: a line of %d fields, expected ACCESS_KEY_ID SECRET_ACCESS_KEY", path, n, len(f))
		case len(f[1]) < MinSecretLen:
			return nil, fmt.Errorf("%s:%d: the secret of %s has %d characters, expected at least %d", path, n, f[0], len(f[1]), MinSecretLen)
		case keys[f[0]] != "":
			return nil, fmt.Errorf("%s:%d: access key %s is given twice, expected each once", path, n, f[0])
		case named[f[1]] != "":
			// Whoever holds the secret signs under either name, so the name a change
			// is recorded under would say nothing of who made it.
			return nil, fmt.Errorf("%s:%d: access key %s has the secret of %s, expected a secret of its own", path, n, f[0], named[f[1]])
		default:
			keys[f[0]] = f[1]
			named[f[1]] = f[0]
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s holds no access key, expected ACCESS_KEY_ID SECRET_ACCESS_KEY lines", path)
	}
	return keys, nil
}

// keyring holds the keys of a file and reads it again when it changed or was
// replaced (its stamp, see internal/watch), so that keys rotate without a reload.
// A file that became unreadable or invalid keeps the keys last read.
type keyring struct {
	path string

	mu    sync.Mutex
	stamp watch.Stamp
	keys  map[string]string
}

func newKeyring(path string) (*keyring, error) {
	st := watch.Stat(path)
	keys, err := ReadKeys(path)
	if err != nil {
		return nil, err
	}
	return &keyring{path: path, stamp: st, keys: keys}, nil
}

// secret returns the secret of key id, reading the file again first when it changed.
func (k *keyring) secret(id string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if st := watch.Stat(k.path); st != k.stamp {
		if keys, err := ReadKeys(k.path); err != nil {
			log.Warningf("route53_api: access_keys: %v; keeping the keys read before", err)
		} else {
			k.keys = keys
		}
		k.stamp = st
	}
	s, ok := k.keys[id]
	return s, ok
}
