//! Integration tests of extpool-skills.
