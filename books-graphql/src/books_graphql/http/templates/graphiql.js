(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("sandbox-config").textContent);
  var root = document.getElementById("graphiql");
  if (!window.React || !window.ReactDOM || !window.GraphiQL) {
    root.firstChild.textContent =
      "The GraphiQL sandbox could not load its assets from " + config.assetsUrl + ".";
    return;
  }
  // Queries go back to the address this page came from: "/" or "/graphql" standalone,
  // "/graphql" through the gateway.
  var fetcher = GraphiQL.createFetcher({ url: window.location.pathname });
  // A shared link may carry its own query: /?query=...
  var linked = new URLSearchParams(window.location.search).get("query");
  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: config.defaultQuery,
      query: linked || undefined,
    })
  );
})();
