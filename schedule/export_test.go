package schedule

// SetQuickProofs turns the quick legality proofs on or off and returns
// the previous setting.
func SetQuickProofs(on bool) bool { return quickProofs.Swap(on) }

// QuickProved returns how many questions the quick proofs settled.
func QuickProved() int64 { return quickProved.Load() }
