/** The console's icon, served from the console's own path (else browsers ask for /favicon.ico). */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#102a43"/><path d="M16 26c0-8 3-13 10-16-1 8-4 13-10 16zm0 0C16 19 13 14 6 12c1 7 4 11 10 14z" fill="#7bd389"/></svg>
`;
