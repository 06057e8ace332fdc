package identity

import "errors"

// Errors returned (wrapped, with detail) by this package. Test with errors.Is.
var (
	ErrInvalidBech32    = errors.New("invalid bech32")
	ErrWrongHRP         = errors.New("wrong bech32 prefix")
	ErrInvalidLength    = errors.New("invalid key length")
	ErrInvalidHex       = errors.New("invalid hex")
	ErrInvalidSecret    = errors.New("invalid secret key")
	ErrInvalidPublicKey = errors.New("invalid public key")
	ErrInvalidNodeAddr  = errors.New("invalid node address")
	ErrInvalidSignature = errors.New("invalid signature")
	ErrEmptyKeyFile     = errors.New("key file is empty")
	ErrKeyPathIsSymlink = errors.New("key path is a symlink")
	ErrKeyFileMode      = errors.New("key file is accessible beyond its owner")
	ErrKeyFileType      = errors.New("key file is not a regular file")
	ErrKeyFileExists    = errors.New("key file already exists")
)
