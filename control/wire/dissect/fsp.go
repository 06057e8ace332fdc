package dissect

import "errors"

// fspPacket dissects an outer FSP packet. Owned by the FSP codec work.
func fspPacket(b []byte) (any, error) { return nil, errors.New("FSP dissector not implemented yet") }

// fspInner dissects a decrypted FSP plaintext. Owned by the FSP codec work.
func fspInner(b []byte) (any, error) {
	return nil, errors.New("FSP inner dissector not implemented yet")
}
