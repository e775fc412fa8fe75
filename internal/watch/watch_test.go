package watch

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// write writes content to path and sets its modification time to mod.
func write(t *testing.T, path, content string, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// Every way of replacing a file is a change, even when size and modification time
// stay the same; reading the file or setting its times to what they were is not.
func TestStampNoticesReplacement(t *testing.T) {
	dir := t.TempDir()
	mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b, link := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "link")
	write(t, a, "version 1", mod)
	write(t, b, "version 2", mod) // same size, same time
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	before := Stat(link)
	if _, err := os.ReadFile(link); err != nil {
		t.Fatal(err)
	}
	if after := Stat(link); after != before {
		t.Fatalf("reading the file changed its stamp: %+v, then %+v", before, after)
	}

	// A symbolic link swapped atomically to the other file.
	tmp := filepath.Join(dir, "link.tmp")
	if err := os.Symlink(b, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
	swapped := Stat(link)
	if swapped == before {
		t.Fatalf("a symlink swapped to a same-size, same-time file kept its stamp %+v", swapped)
	}

	// The file rewritten in place, its modification time set back.
	stamp := Stat(b)
	write(t, b, "version 3", mod)
	if Stat(b) == stamp {
		t.Fatalf("a file rewritten in place with the same size and time kept its stamp %+v", stamp)
	}

	// Removed: an unreadable stamp, different from any file's.
	os.Remove(a)
	if s := Stat(a); s.Size != -1 {
		t.Fatalf("a removed file's stamp is %+v; want Size -1", s)
	}
}

// Poll calls changed once per change, at the next check after it; a change
// changed did not take (false) is offered again at the following check; nil
// stamps make the first check a change. In fake time, at a 2 s period.
func TestPollCallsOncePerChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = 2 * time.Second
		dir := t.TempDir()
		mod := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		a, b, link := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "link")
		write(t, a, "version 1", mod)
		write(t, b, "version 2", mod)
		if err := os.Symlink(a, link); err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int32
		var refuse atomic.Bool
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			Poll(ctx, period, []string{link}, Stamps([]string{link}), func() bool {
				calls.Add(1)
				return !refuse.Load()
			})
		}()
		wait := func(d time.Duration) { time.Sleep(d); synctest.Wait() }
		wait(3 * period)
		if n := calls.Load(); n != 0 {
			t.Fatalf("%d calls with the file unchanged; want 0", n)
		}
		refuse.Store(true)
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(b, link); err != nil {
			t.Fatal(err)
		}
		wait(period)
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d calls one period after the swap; want 1", n)
		}
		refuse.Store(false)
		wait(period)
		wait(2 * period)
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d calls after the refused change was offered again; want 2 (one retry, then quiet)", n)
		}
		cancel()
		<-done

		calls.Store(0)
		ctx, cancel = context.WithCancel(t.Context())
		defer cancel()
		go Poll(ctx, period, []string{link}, nil, func() bool { calls.Add(1); return true })
		wait(period)
		if n := calls.Load(); n != 1 {
			t.Fatalf("with no stamps, %d calls at the first check; want 1", n)
		}
	})
}
