window.ui = SwaggerUIBundle({
  url: $document_url,
  dom_id: "#docs",
  // No validator badge: it would send the document's URL to swagger.io and load its image.
  validatorUrl: null,
});
