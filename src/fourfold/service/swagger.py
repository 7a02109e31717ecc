"""Swagger UI at /docs from assets installed with fourfold (swagger-ui-py), never from a CDN.

An offline machine, or a network that blocks CDNs, would otherwise get a blank page.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import re
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from fourfold._extras import missing

__all__ = ["ASSETS_PATH", "install_swagger_ui", "page_headers", "swagger_assets"]

#: Where the Swagger UI files are served from.
ASSETS_PATH = "/docs/assets"


def swagger_assets() -> Path:
    """The folder of Swagger UI's JavaScript and CSS, shipped by the swagger-ui-py package."""
    spec = importlib.util.find_spec("swagger_ui")  # its folder only: the package imports jinja2
    if spec is None or not spec.submodule_search_locations:
        raise missing("the service's /docs page", "server")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def install_swagger_ui(app: FastAPI, *, title: str) -> None:
    """Serve the interactive API docs at /docs (create the app with docs_url=None)."""
    app.mount(ASSETS_PATH, StaticFiles(directory=swagger_assets()), name="swagger-assets")

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{title} - API docs",
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_PATH}/favicon-32x32.png",
        )
        page.headers.update(page_headers(bytes(page.body)))
        return page


def page_headers(html: bytes) -> dict[str, str]:
    """The inspector's protective headers for a page, its own inline scripts allowed by hash.

    Swagger UI starts from one inline script; its hash admits exactly that script, and no
    other page may frame the docs.
    """
    inline = re.findall(rb"<script>(.*?)</script>", html, flags=re.DOTALL)
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s).digest()).decode()}'" for s in inline)
    csp = (f"default-src 'none'; script-src 'self' {hashes}; style-src 'self' 'unsafe-inline'; "
           "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
    return {"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer"}
