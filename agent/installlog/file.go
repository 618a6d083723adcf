package installlog

import (
	"bytes"
	"io"
	"os"
	"unicode/utf16"
)

// utf16BOM starts a log Windows Installer writes in UTF-16 (little
// endian); a log without it is written in the system's code page, to
// which the ASCII lines Report writes belong.
var utf16BOM = []byte{0xff, 0xfe}

// appendLine appends line and a CRLF to the existing file path, in the
// file's encoding. Windows Installer keeps its log open while it runs:
// the file is opened sharing reading and writing (Go's default on
// Windows), and any failure is the caller's to ignore.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(utf16BOM))
	n, _ := io.ReadFull(io.NewSectionReader(f, 0, int64(len(head))), head)
	text := line + "\r\n"
	b := []byte(text)
	if bytes.Equal(head[:n], utf16BOM) {
		u := utf16.Encode([]rune(text))
		b = make([]byte, 0, 2*len(u))
		for _, r := range u {
			b = append(b, byte(r), byte(r>>8))
		}
	}
	_, err = f.Write(b)
	return err
}
