"""Keys that encrypt what the service stores for tenants (SECRETS_KEY_FILE)."""
