package dissect

import (
	"encoding/hex"
	"encoding/json"
	"testing"
)

// FuzzDecodeAnyLayer: whatever the bytes and layer, Decode either fails
// with an error or returns something that marshals to JSON; it never
// panics. This is what `fipsctl wire decode` runs on operator input.
func FuzzDecodeAnyLayer(f *testing.F) {
	for _, s := range []string{
		"000005000403020100000000000000001eab59320210492046bd30e3654eb06ad54545fefd",
		"0000000051", "000000005007", "01006e00", "02004100",
		"0004220020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		"", "00", "ff",
	} {
		b, _ := hex.DecodeString(s)
		for l := range uint8(5) {
			f.Add(b, l)
		}
	}
	layers := []Layer{Auto, FMP, FSP, FMPInner, FSPInner}
	f.Fuzz(func(t *testing.T, b []byte, l uint8) {
		v, err := Decode(b, layers[int(l)%len(layers)])
		if err != nil {
			if v != nil {
				t.Fatalf("value %v alongside error %v", v, err)
			}
			return
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("result does not marshal: %v", err)
		}
	})
}
