"""notebook.capture"""
