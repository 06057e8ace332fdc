package afxdp

import "fmt"

func errorf(format string, args ...any) error {
	return fmt.Errorf("afxdp: "+format, args...)
}
