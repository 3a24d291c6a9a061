"""The jupyter_server extension: the REST API the JupyterLab sidebar talks to."""
