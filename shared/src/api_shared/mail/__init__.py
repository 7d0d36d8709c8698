"""Mail: a transactional outbox of mail, sent over SMTP.

- ``message``: ``Mail``, one mail to one address (text and HTML);
- ``models`` and ``outbox``: the ``outbox_mail`` table, and ``MailOutbox.record``, which
  writes a mail in the caller's transaction (each sending service's migration creates the
  table with ``migration.mail_outbox_operations``);
- ``settings``: ``MailSettings`` (``SMTP_URL``, ``SMTP_PASSWORD_FILE``, ``MAIL_FROM``...);
- ``smtp``: the ``Transport`` the sender sends through, ``SmtpTransport`` (aiosmtplib), and
  ``build_message``;
- ``sender``: ``MailSender``, the background task that sends due mail and retries the rest.

Development and tests send to ``api_devservers.mail_catcher``, not part of this package.

No business text lives here: each service writes its own mails.
"""
