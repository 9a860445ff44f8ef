//! Integration tests of extpool-config.
