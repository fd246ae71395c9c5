"""Pure decisions: `decide(state, command) -> events`, and the invariants."""
