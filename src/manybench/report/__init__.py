"""Reports of a results directory: terminal (rich) and a self-contained HTML page."""
from .html import write_html
from .terminal import render, render_text

__all__ = ["render", "render_text", "write_html"]
