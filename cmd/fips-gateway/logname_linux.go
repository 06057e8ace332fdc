package main

import (
	"context"
	"log/slog"
)

// renameHandler gives the shared control server's listening line
// upstream's gateway wording.
type renameHandler struct{ slog.Handler }

func (h renameHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "Control socket listening" {
		r.Message = "Gateway control socket listening"
	}
	return h.Handler.Handle(ctx, r)
}

func (h renameHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return renameHandler{h.Handler.WithAttrs(as)}
}

func (h renameHandler) WithGroup(name string) slog.Handler {
	return renameHandler{h.Handler.WithGroup(name)}
}
