package ntwire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrLineTooLong is the error of Reader.Read for a line over MaxLine.
var ErrLineTooLong = errors.New("ntwire: line too long")

// ErrMalformed is the error of Reader.Read for a line that is not a JSON
// object with a type.
var ErrMalformed = errors.New("ntwire: malformed line")

// Reader reads messages, one per line.
type Reader struct {
	br  *bufio.Reader
	max int
}

// NewReader returns a Reader of r that accepts lines of up to MaxLine bytes.
func NewReader(r io.Reader) *Reader { return NewReaderSize(r, MaxLine) }

// NewReaderSize returns a Reader of r that accepts lines of up to max bytes.
func NewReaderSize(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Read returns the next message. Blank lines are skipped. A line over the
// limit is ErrLineTooLong and the stream cannot be read further; a line
// that does not decode is ErrMalformed, and the next Read reads the line
// after it.
func (r *Reader) Read() (Message, error) {
	for {
		line, err := r.line()
		if err != nil {
			return Message{}, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var m Message
		if err := json.Unmarshal(line, &m); err != nil || m.Type == "" {
			return Message{}, ErrMalformed
		}
		return m, nil
	}
}

// line reads one line without its newline.
func (r *Reader) line() ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(buf)+len(chunk) > r.max+2 { // the newline and a carriage return
			return nil, ErrLineTooLong
		}
		switch {
		case err == nil:
			if buf == nil {
				return chunk, nil
			}
			return append(buf, chunk...), nil
		case errors.Is(err, bufio.ErrBufferFull):
			buf = append(buf, chunk...)
		case errors.Is(err, io.EOF) && len(buf)+len(chunk) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// Writer writes messages, one per line. It is safe for concurrent use: each
// message is written whole.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write encodes m on one line.
func (w *Writer) Write(m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("ntwire: encode %s: %w", m.Type, err)
	}
	if len(b) > MaxLine {
		return ErrLineTooLong
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.w.Write(b)
	return err
}

// Encode marshals v for a Params, Result or Data field.
func Encode(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("ntwire: encode: %w", err)
	}
	return b, nil
}
