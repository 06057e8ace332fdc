package native

import (
	"errors"
	"testing"
)

// FuzzParse: any line parses to a command whose ports obey the tiers, or
// to a *CommandError with an errno and a one-line message; never panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"command":"connect","params":{"peer":"npub1abc","remote_port":4242,"local_port":5000}}`,
		`{"command":"listen","params":{"local_port":0}}`,
		`{"command":"inject","params":{"flow_id":1,"data":"00ff","repeat":64}}`,
		`{"command":"arrive","params":{"peer":"npub1x","src_port":1,"dst_port":2,"data":""}}`,
		`{"command":"stats","params":{"flow_id":18446744073709551615}}`,
		`{"command":"listen","params":[4242]}`, `{"command":1}`, `{}`, `null`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		cmd, err := Parse(line)
		if err != nil {
			var ce *CommandError
			if !errors.As(err, &ce) || ce.Kind == nil {
				t.Fatalf("untyped error %T %v", err, err)
			}
			if Errno(err) == "ECONNREFUSED" {
				t.Fatalf("parse refusal without a specific errno: %v", err)
			}
			return
		}
		switch c := cmd.(type) {
		case Connect:
			if CheckBindable(c.Remote) != nil || (c.Local != 0 && CheckBindable(c.Local) != nil) {
				t.Fatalf("reserved port accepted: %+v", c)
			}
		case Listen:
			if c.Local != 0 && CheckBindable(c.Local) != nil {
				t.Fatalf("reserved port accepted: %+v", c)
			}
		case Inject:
			if c.Repeat == 0 || c.Repeat > MaxInjectRepeat {
				t.Fatalf("repeat %d accepted", c.Repeat)
			}
		}
	})
}
