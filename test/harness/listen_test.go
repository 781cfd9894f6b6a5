package harness

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

func TestListensOnTellsTheHolder(t *testing.T) {
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	port := l.Addr().(*net.TCPAddr).Port
	if ok, err := listensOn(os.Getpid(), port); err != nil || !ok {
		t.Errorf("listensOn(self, %d) = %v, %v; want true: this process listens there", port, ok, err)
	}
	if ok, err := listensOn(os.Getpid(), port+1); err != nil || ok {
		t.Errorf("listensOn(self, %d) = %v, %v; want false", port+1, ok, err)
	}

	// A process whose port this one holds never listens on it: started
	// beside it, its health check would have been answered by this one.
	other, err := StartProcess("/bin/sleep", []string{"30"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Kill()
	if err := other.WaitListening(t.Context(), port, 300*time.Millisecond); !errors.Is(err, ErrPortTaken) {
		t.Errorf("WaitListening on a port another process holds = %v, want ErrPortTaken", err)
	}
	gone, err := StartProcess("/bin/true", nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := gone.WaitListening(t.Context(), port, time.Minute); !errors.Is(err, ErrPortTaken) {
		t.Errorf("WaitListening of a process that exits = %v, want ErrPortTaken", err)
	}
}
