//! Integration tests of extpool-plugins.
