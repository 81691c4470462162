// /docs: Swagger UI 5 (vendor/swagger-ui-bundle.js) reading this server's OpenAPI 3.1 document.
// No online validator badge (it would call validator.swagger.io: the page talks to its own origin only).
window.ui = window.SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
  persistAuthorization: false,
});
