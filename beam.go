package minigpt

import (
	"context"
	"fmt"
)

// beamSearch is a placeholder until beam search lands.
func (m *Model) beamSearch(ctx context.Context, prompt []int, o *GenerateOptions, chars []rune, n int) ([]Completion, error) {
	return nil, fmt.Errorf("%w: beam search is not implemented yet", ErrBadOption)
}
