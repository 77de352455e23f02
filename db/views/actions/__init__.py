"""What the pages and the API do to the store, each named for its action: sign-in, upload, triage, retraction."""
