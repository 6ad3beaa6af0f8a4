// The desk's webviews (agent session, kept conversation) render the model's Markdown with the
// phone's own renderer and sanitiser: this bundle (media/markdown.js) gives them
// `window.deskrelayMarkdown.renderMarkdown`, and nothing else of the phone's page.
export { renderMarkdown } from './markdown';
