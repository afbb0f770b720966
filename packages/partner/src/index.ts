// Built out in its own issue; see README.md for the plan.
export {}
