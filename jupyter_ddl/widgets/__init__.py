"""Notebook views over the job API: the submit form, the live dashboard and their
plain-text/HTML fallbacks. ipywidgets is imported only when a widget view is built."""
