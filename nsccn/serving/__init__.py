"""Serving: the Navigator, the tools declared once, the MCP server and text output."""
