"""Attachments: files a user uploads once and then names in a turn's input (`POST /files`)."""
