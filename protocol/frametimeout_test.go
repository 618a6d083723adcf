package protocol

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Once a frame's first byte has arrived, the rest must follow within the
// frame timeout; between frames there is no deadline.
func TestFrameTimeout(t *testing.T) {
	t.Parallel()
	const d = 100 * time.Millisecond
	for _, tc := range []struct {
		name  string
		write func(w net.Conn) error
		want  error // nil: the frame is read
	}{
		{"whole frame after a long pause", func(w net.Conn) error {
			time.Sleep(3 * d)
			_, err := w.Write(frame(t, `{"id":1}`))
			return err
		}, nil},
		{"header, then the body in time", func(w net.Conn) error {
			f := frame(t, `{"id":1}`)
			if _, err := w.Write(f[:3]); err != nil {
				return err
			}
			time.Sleep(d / 4)
			_, err := w.Write(f[3:])
			return err
		}, nil},
		{"a dripped body", func(w net.Conn) error {
			f := frame(t, `{"id":1}`)
			for _, b := range f {
				if _, err := w.Write([]byte{b}); err != nil {
					return nil // the reader gave up
				}
				time.Sleep(d / 3)
			}
			return nil
		}, ErrFrameTimeout},
		{"a dripped header", func(w net.Conn) error {
			for _, b := range frame(t, `{"id":1}`)[:HeaderSize] {
				if _, err := w.Write([]byte{b}); err != nil {
					return nil
				}
				time.Sleep(d / 2)
			}
			return nil
		}, ErrFrameTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, w := net.Pipe()
			defer r.Close()
			defer w.Close()
			errc := make(chan error, 1)
			go func() { errc <- tc.write(w) }()
			fr := NewReader(r, 0)
			fr.SetFrameTimeout(d)
			start := time.Now()
			typ, payload, err := fr.ReadFrame()
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
				require.Less(t, time.Since(start), 3*d+d, "the frame had its time, and no more")
				r.Close()
			} else {
				require.NoError(t, err)
				require.Equal(t, TypeEvent, typ)
				require.JSONEq(t, `{"id":1}`, string(payload))
			}
			require.NoError(t, <-errc)
		})
	}
}

// Frames in a row each get their own deadline, and the deadline is off
// while the reader waits for the next one.
func TestFrameTimeoutBetweenFrames(t *testing.T) {
	t.Parallel()
	const d = 50 * time.Millisecond
	r, w := net.Pipe()
	defer r.Close()
	defer w.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3 {
			time.Sleep(2 * d)
			f := frame(t, `{"id":2}`)
			_, _ = w.Write(f[:2])
			time.Sleep(d / 2)
			_, _ = w.Write(f[2:])
		}
		w.Close()
	}()
	fr := NewReader(r, 0)
	fr.SetFrameTimeout(d)
	for range 3 {
		_, _, err := fr.ReadFrame()
		require.NoError(t, err)
	}
	_, _, err := fr.ReadFrame()
	require.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe), "%v", err)
	<-done
}

func frame(t *testing.T, payload string) []byte {
	f, err := AppendFrame(nil, TypeEvent, []byte(payload))
	if err != nil {
		t.Error(err)
	}
	return f
}
