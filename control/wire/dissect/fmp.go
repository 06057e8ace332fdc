package dissect

import "errors"

// fmpPacket dissects an outer FMP packet. Owned by the FMP codec work.
func fmpPacket(b []byte) (any, error) { return nil, errors.New("FMP dissector not implemented yet") }

// fmpInner dissects a decrypted FMP plaintext. Owned by the FMP codec work.
func fmpInner(b []byte) (any, error) {
	return nil, errors.New("FMP inner dissector not implemented yet")
}
