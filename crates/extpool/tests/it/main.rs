//! CLI tests: the real `extpool` binary, run as a user runs it.
