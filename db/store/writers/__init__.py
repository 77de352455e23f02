"""What writes into the store besides an upload: who may write (tokens) and the browser sessions signed in with a
token (sessions), a retraction (retract), triage notes (triage), the derived tables' upkeep after uploads (upkeep),
and whole-store backup, restore and copy (backup, copy)."""
