package installer

import (
	"bytes"
	"crypto/sha1"
	"debug/pe"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// table is one table of an MSI as `msiinfo export` prints it: a line of
// column names, a line of column types, a line with the table's name and
// its key columns, then one tab-separated line per row (CRLF endings).
type table struct {
	name    string
	columns []string
	rows    []map[string]string
}

// exportTable reads the table name of the MSI at path.
func exportTable(t *testing.T, path, name string) table {
	t.Helper()
	out, err := exec.Command("msiinfo", "export", path, name).Output()
	require.NoError(t, err, "msiinfo export %s", name)
	tb, err := parseTable(name, string(out))
	require.NoError(t, err)
	return tb
}

func parseTable(name, text string) (table, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if len(lines) < 3 {
		return table{}, fmt.Errorf("table %s: %d lines, want at least 3", name, len(lines))
	}
	tb := table{name: name, columns: strings.Split(lines[0], "\t")}
	for _, line := range lines[3:] {
		if line == "" {
			continue
		}
		cells := strings.Split(line, "\t")
		if len(cells) != len(tb.columns) {
			return table{}, fmt.Errorf("table %s: a row of %d cells, want %d", name, len(cells), len(tb.columns))
		}
		row := make(map[string]string, len(cells))
		for i, c := range cells {
			row[tb.columns[i]] = c
		}
		tb.rows = append(tb.rows, row)
	}
	return tb, nil
}

// row returns the row whose column col is value, failing t when there is
// not exactly one.
func (tb table) row(t *testing.T, col, value string) map[string]string {
	t.Helper()
	var found []map[string]string
	for _, r := range tb.rows {
		if r[col] == value {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "rows of %s with %s=%q", tb.name, col, value)
	return found[0]
}

// has reports whether a row's column col is value.
func (tb table) has(col, value string) bool {
	for _, r := range tb.rows {
		if r[col] == value {
			return true
		}
	}
	return false
}

// uuid5 is RFC 9562's name-based UUID (SHA-1) of name in namespace ns
// (both as text), in upper case as MSI tables write GUIDs.
func uuid5(ns, name string) (string, error) {
	raw, err := hex.DecodeString(strings.ReplaceAll(strings.Trim(ns, "{}"), "-", ""))
	if err != nil || len(raw) != 16 {
		return "", fmt.Errorf("namespace %q is not a UUID", ns)
	}
	sum := sha1.Sum(append(raw, name...))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return strings.ToUpper(fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])), nil
}

// peStringVar reads the value of the Go string variable sym (e.g.
// "tradebridge/agent.Version") from the Windows executable at path: the
// variable's header (pointer, length) from its COFF symbol, then the bytes
// it points to. The executable must keep its symbol table (no -s).
func peStringVar(path, sym string) (string, error) {
	f, err := pe.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	opt, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok {
		return "", errors.New("not a 64-bit executable")
	}
	var s *pe.Symbol
	for _, c := range f.Symbols {
		if c.Name == sym {
			s = c
			break
		}
	}
	if s == nil {
		return "", fmt.Errorf("no symbol %s (stripped with -s?)", sym)
	}
	if s.SectionNumber < 1 || int(s.SectionNumber) > len(f.Sections) {
		return "", fmt.Errorf("symbol %s in section %d", sym, s.SectionNumber)
	}
	header := make([]byte, 16)
	if _, err := f.Sections[s.SectionNumber-1].ReadAt(header, int64(s.Value)); err != nil {
		return "", fmt.Errorf("reading %s: %w", sym, err)
	}
	ptr := binary.LittleEndian.Uint64(header[0:8])
	n := binary.LittleEndian.Uint64(header[8:16])
	if n > 1<<10 {
		return "", fmt.Errorf("%s has length %d", sym, n)
	}
	rva := ptr - opt.ImageBase
	for _, sec := range f.Sections {
		start := uint64(sec.VirtualAddress)
		if rva >= start && rva+n <= start+uint64(sec.Size) {
			b := make([]byte, n)
			if _, err := sec.ReadAt(b, int64(rva-start)); err != nil {
				return "", err
			}
			return string(b), nil
		}
	}
	return "", fmt.Errorf("%s points outside the file's sections", sym)
}

// corrupt writes a copy of src to dst with one byte of the middle flipped.
func corrupt(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	b = bytes.Clone(b)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(dst, b, 0o600))
}
