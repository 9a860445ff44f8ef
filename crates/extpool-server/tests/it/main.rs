//! Integration tests of the gateway.
