"""The JupyterLab extension's catalogs: ``locale/<ko_KR|ja_JP|zh_CN|zh_TW>/LC_MESSAGES/
jupyter_ddl.json``, written from the ``.po`` files by ``python -m
jupyter_ddl.i18n.extract``. The ``jupyterlab.locale`` entry point names this module;
jupyterlab_server serves these files with the language pack JupyterLab is set to."""
