"""`GET /docs` (Swagger UI) and `GET /redoc` from the vendored copies in static/vendor: they work offline.

Their CSP keeps them to this origin: Redoc's side menu shows a logo from its vendor's CDN, and
Swagger UI would ask a public validator about the spec; the browser blocks both before any request.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse

VENDOR = "/web/static/vendor"
FAVICON = f"{VENDOR}/swagger-ui/favicon-32x32.png"
OPENAPI_URL = "/openapi.json"
TITLE = "agent-runtime"
DOCS_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
}
router = APIRouter(include_in_schema=False)


@router.get("/docs")
async def swagger_ui() -> HTMLResponse:
    page = get_swagger_ui_html(
        openapi_url=OPENAPI_URL,
        title=f"{TITLE} · API",
        swagger_js_url=f"{VENDOR}/swagger-ui/swagger-ui-bundle.js",
        swagger_css_url=f"{VENDOR}/swagger-ui/swagger-ui.css",
        swagger_favicon_url=FAVICON,
        swagger_ui_parameters={"validatorUrl": None},
    )
    page.headers.update(DOCS_HEADERS)
    return page


@router.get("/redoc")
async def redoc() -> HTMLResponse:
    page = get_redoc_html(
        openapi_url=OPENAPI_URL,
        title=f"{TITLE} · API reference",
        redoc_js_url=f"{VENDOR}/redoc/redoc.standalone.js",
        redoc_favicon_url=FAVICON,
        with_google_fonts=False,
    )
    page.headers.update(DOCS_HEADERS)
    return page
