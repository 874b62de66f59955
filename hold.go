package minigpt

// How a Trainer holds its Model: at most one at a time.

import "errors"

// ErrModelInUse is returned (wrapped) by NewTrainer for a model another
// Trainer holds, and by a Trainer's methods after Close.
var ErrModelInUse = errors.New("model in use")

// take makes t the Trainer holding m, or reports the Trainer that does.
func (m *Model) take(t *Trainer) error {
	if !m.trainer.CompareAndSwap(nil, t) {
		return errors.New("another Trainer holds this model (Close it first, or train a copy made with Model.Clone)")
	}
	return nil
}

// release ends t's hold on m.
func (m *Model) release(t *Trainer) { m.trainer.CompareAndSwap(t, nil) }
