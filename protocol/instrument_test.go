package protocol

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseInstrument(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Instrument // zero: refused
		name string     // String(); the input when empty
	}{
		// Contracts.
		{in: "ES 12-26", want: Instrument{Form: InstrumentContract, Root: "ES", Month: time.December, Year: 26, YearDigits: 2}},
		{in: "es 03-27", want: Instrument{Form: InstrumentContract, Root: "ES", Month: time.March, Year: 27, YearDigits: 2}, name: "ES 03-27"},
		{in: "M2K 01-00", want: Instrument{Form: InstrumentContract, Root: "M2K", Month: time.January, Year: 0, YearDigits: 2}},
		{in: "ABCDEF 10-99", want: Instrument{Form: InstrumentContract, Root: "ABCDEF", Month: time.October, Year: 99, YearDigits: 2}},
		{in: "6E 06-26", want: Instrument{Form: InstrumentContract, Root: "6E", Month: time.June, Year: 26, YearDigits: 2}},
		// Month codes.
		{in: "ESZ26", want: Instrument{Form: InstrumentMonthCode, Root: "ES", Month: time.December, Year: 26, YearDigits: 2}},
		{in: "ESZ6", want: Instrument{Form: InstrumentMonthCode, Root: "ES", Month: time.December, Year: 6, YearDigits: 1}},
		{in: "ESZ06", want: Instrument{Form: InstrumentMonthCode, Root: "ES", Month: time.December, Year: 6, YearDigits: 2}},
		{in: "esh7", want: Instrument{Form: InstrumentMonthCode, Root: "ES", Month: time.March, Year: 7, YearDigits: 1}, name: "ESH7"},
		{in: "CLF27", want: Instrument{Form: InstrumentMonthCode, Root: "CL", Month: time.January, Year: 27, YearDigits: 2}},
		{in: "SR3Z6", want: Instrument{Form: InstrumentMonthCode, Root: "SR3", Month: time.December, Year: 6, YearDigits: 1}},
		{in: "M2KU26", want: Instrument{Form: InstrumentMonthCode, Root: "M2K", Month: time.September, Year: 26, YearDigits: 2}},
		{in: "ABCDEFZ26", want: Instrument{Form: InstrumentMonthCode, Root: "ABCDEF", Month: time.December, Year: 26, YearDigits: 2}},
		{in: "XZ6", want: Instrument{Form: InstrumentMonthCode, Root: "X", Month: time.December, Year: 6, YearDigits: 1}},
		// Roots, including names that are not month codes.
		{in: "ES", want: Instrument{Form: InstrumentRoot, Root: "ES"}},
		{in: "mnq", want: Instrument{Form: InstrumentRoot, Root: "MNQ"}, name: "MNQ"},
		{in: "ESZ", want: Instrument{Form: InstrumentRoot, Root: "ESZ"}},
		{in: "SR3", want: Instrument{Form: InstrumentRoot, Root: "SR3"}},
		{in: "Z6", want: Instrument{Form: InstrumentRoot, Root: "Z6"}},         // no root before the letter
		{in: "ESA26", want: Instrument{Form: InstrumentRoot, Root: "ESA26"}},   // A is no month letter
		{in: "ES123", want: Instrument{Form: InstrumentRoot, Root: "ES123"}},   // three year digits
		{in: "ESZ126", want: Instrument{Form: InstrumentRoot, Root: "ESZ126"}}, // likewise
		{in: "123456", want: Instrument{Form: InstrumentRoot, Root: "123456"}},
		// Refused.
		{in: ""},
		{in: " ES"},
		{in: "ES "},
		{in: "ES  12-26"},
		{in: "ES\t12-26"},
		{in: "ES 12-26 "},
		{in: "ES 13-26"},
		{in: "ES 00-26"},
		{in: "ES 1-26"},
		{in: "ES 12-6"},
		{in: "ES 12/26"},
		{in: "ES 12-2026"},
		{in: " 12-26"},
		{in: "ABCDEFG 12-26"},
		{in: "E-S 12-26"},
		{in: "ABCDEFG"},
		{in: "ABCDEFGZ6"},
		{in: "ABCDEFZ126"},
		{in: "ES-Z6"},
		{in: "ÉS"},
		{in: "ES\x00"},
		{in: "ESZ2６"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseInstrument(tc.in)
			if tc.want == (Instrument{}) {
				require.ErrorIs(t, err, ErrMalformedInstrument)
				require.Zero(t, got)
				require.Empty(t, got.String())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			name := tc.name
			if name == "" {
				name = tc.in
			}
			require.Equal(t, name, got.String())
			again, err := ParseInstrument(got.String())
			require.NoError(t, err)
			require.Equal(t, got, again)
		})
	}
}

// InstrumentPattern describes the same names as ParseInstrument.
func TestInstrumentPattern(t *testing.T) {
	re := regexp.MustCompile(InstrumentPattern)
	for _, s := range []string{"ES", "es", "ES 12-26", "ESZ26", "esz6", "ABCDEFZ26", "ABCDEF 12-26",
		"", "ES  12-26", "ES 13-26", "ESZ126", "ABCDEFG", "ES-Z6", "ÉS", "ES\n"} {
		_, err := ParseInstrument(s)
		require.Equal(t, err == nil, re.MatchString(s), "%q", s)
	}
}

func TestMonthCodes(t *testing.T) {
	for m := time.January; m <= time.December; m++ {
		c := MonthCode(m)
		require.Equal(t, m, MonthOfCode(c))
		require.Equal(t, m, MonthOfCode(c+'a'-'A'), "lower case")
	}
	require.Equal(t, byte('Z'), MonthCode(time.December))
	require.Equal(t, byte('F'), MonthCode(time.January))
	for _, m := range []time.Month{0, 13, -1} {
		require.Zero(t, MonthCode(m))
	}
	for _, c := range []byte{'A', 'b', '{', '0', ' ', 0, 0xC9} {
		require.Zero(t, MonthOfCode(c), "%q", c)
	}
}

func TestContractName(t *testing.T) {
	for _, tc := range []struct {
		root  string
		month time.Month
		year  int
		want  string
	}{
		{"ES", time.December, 2026, "ES 12-26"},
		{"CL", time.January, 27, "CL 01-27"},
		{"GC", time.February, 2100, "GC 02-00"},
		{"M2K", time.September, 2009, "M2K 09-09"},
	} {
		require.Equal(t, tc.want, ContractName(tc.root, tc.month, tc.year))
	}
}

func TestNormalizeInstrument(t *testing.T) {
	for in, want := range map[string]string{
		"es 12-26":   "ES 12-26",
		"  esz6\t":   "ESZ6",
		"\u00a0nq\n": "NQ",
		"":           "",
	} {
		require.Equal(t, want, NormalizeInstrument(in), "%q", in)
	}
}

func TestValidRoot(t *testing.T) {
	for s, want := range map[string]bool{
		"ES": true, "m2k": true, "6E": true, "ABCDEF": true, "1": true,
		"": false, "ABCDEFG": false, "E S": false, "E-S": false, "ÉS": false,
	} {
		require.Equal(t, want, ValidRoot(s), "%q", s)
	}
}
