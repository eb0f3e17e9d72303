"""The browser chat page: static files served as they are (no build step, no CDN)."""
