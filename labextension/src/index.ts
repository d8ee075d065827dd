// JupyterLab 4 / Notebook 7 extension of jupyter_profview: profiler traces open from the file
// browser in a "Profile viewer" tab (documents example of jupyterlab/extension-examples); the data
// comes from the server extension (jupyter_profview/server), the drawing from js/src (one view code).

import { ILabShell, type JupyterFrontEnd, type JupyterFrontEndPlugin } from "@jupyterlab/application";
import { MainAreaWidget, ToolbarButton } from "@jupyterlab/apputils";
import { PageConfig, PathExt, URLExt } from "@jupyterlab/coreutils";
import { ABCWidgetFactory, DocumentWidget, TextModelFactory, type DocumentRegistry } from "@jupyterlab/docregistry";
import { IFileBrowserFactory } from "@jupyterlab/filebrowser";
import type { Contents } from "@jupyterlab/services";
import { LabIcon, notebookIcon } from "@jupyterlab/ui-components";
import type { SessionStatus } from "../../js/src/transport_http";
import { ProfviewPanel } from "./panel";

export const FACTORY = "Profile viewer";
const MODEL = "profview-nocontent";
const OPEN_RUN = "profview:open-run";
const OPEN_NOTEBOOK = "profview:open-in-notebook";

/** Nested slices on a time axis, coloured with the theme (jp-icon classes). */
export const traceIcon = new LabIcon({
  name: "jupyter-profview:trace",
  svgstr: `<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="2" y="4" width="20" height="4" rx="1"/><rect x="4" y="10" width="9" height="4" rx="1"/>
    <rect x="15" y="10" width="5" height="4" rx="1"/><rect x="5" y="16" width="4" height="4" rx="1"/>
  </g></svg>`,
});

/** File types the loader sniffs (`profview.formats()`), by the names profilers give them. */
export const FILE_TYPES: Array<Partial<DocumentRegistry.IFileType>> = [
  { name: "profview-pytorch-trace", displayName: "PyTorch profiler trace", extensions: [".pt.trace.json", ".pt.trace.json.gz"] },
  { name: "profview-chrome-trace", displayName: "Chrome trace", extensions: [".trace.json", ".trace.json.gz"] },
  { name: "profview-xplane", displayName: "XPlane profile", extensions: [".xplane.pb", ".xplane.pb.gz"] },
  { name: "profview-run-metadata", displayName: "TensorFlow RunMetadata", extensions: [".pb", ".pb.gz", ".pbtxt"] },
];

/** The document model asks for no content: the server's worker reads the file, not the browser. */
class NoContentModelFactory extends TextModelFactory {
  get name(): string {
    return MODEL;
  }

  get contentType(): Contents.ContentType {
    return "file";
  }

  get fileFormat(): Contents.FileFormat {
    return null;
  }
}

/** The notebook "Open in notebook" writes at the server's root, where the user's notebooks
 * live, never in the trace's directory (a kernel started there imports whatever
 * `jupyter_profview.py` was planted beside the trace): code that loads what the tab shows by its
 * path from the root (`status` of the loaded session; a run directory the server opened as one
 * file -- the `ranks` extra is missing -- loads that file, not `load_many`). */
export const NOTEBOOK_DIR = "";

export function notebookFor(path: string, isDir: boolean, status: SessionStatus | null = null): Record<string, unknown> {
  const name = path.replace(/^\/+/, ""); // relative to the root, where the kernel starts
  const run = status?.run;
  let code: string;
  if (isDir && run?.mode === "one-file") {
    const reason = run.reason.replace(/\s+/g, " ");
    code = `# one file of the run, as in the viewer tab (${reason})\n` +
      `t = profview.load(${JSON.stringify(`${name}/${run.file}`)})`;
  } else if (isDir) {
    code = `t = profview.load_many(${JSON.stringify(name)})`;
  } else {
    code = `t = profview.load(${JSON.stringify(name)})`;
  }
  const source = `import jupyter_profview as profview\n\n${code}\nprofview.show(t)`;
  return {
    cells: [{ cell_type: "code", execution_count: null, metadata: {}, outputs: [], source }],
    metadata: { kernelspec: { display_name: "Python 3 (ipykernel)", language: "python", name: "python3" } },
    nbformat: 4, nbformat_minor: 5,
  };
}

async function openInNotebook(
  app: JupyterFrontEnd, path: string, isDir: boolean, loaded: Promise<SessionStatus | null> = Promise.resolve(null),
): Promise<void> {
  const status = await loaded;  // the code follows what the tab loaded
  const contents = app.serviceManager.contents;
  const made = await contents.newUntitled({ path: NOTEBOOK_DIR, type: "notebook" });
  await contents.save(made.path, { type: "notebook", format: "json", content: notebookFor(path, isDir, status) });
  await app.commands.execute("docmanager:open", { path: made.path, factory: "Notebook" });
}

function notebookButton(app: JupyterFrontEnd, panel: ProfviewPanel, isDir: boolean): ToolbarButton {
  return new ToolbarButton({
    icon: notebookIcon, label: "Open in notebook", className: "jp-ProfviewPanel-notebook",
    tooltip: "A new notebook at the server's root with t = profview.load(path); profview.show(t)",
    onClick: () => void openInNotebook(app, panel.path, isDir, panel.loaded),
  });
}

/** `{base_url}profview/view?path=...`: the viewer as a page of its own (server/page.py). */
export function viewerPageUrl(path: string): string {
  return URLExt.join(PageConfig.getBaseUrl(), "profview/view") + "?path=" + encodeURIComponent(path);
}

class ProfviewFactory extends ABCWidgetFactory<DocumentWidget<ProfviewPanel>> {
  constructor(private app: JupyterFrontEnd, options: DocumentRegistry.IWidgetFactoryOptions) {
    super(options);
  }

  protected createNewWidget(context: DocumentRegistry.Context): DocumentWidget<ProfviewPanel> {
    // the model holds no content (NoContentModelFactory): saving it would empty the trace file
    context.model.readOnly = true;
    const content = new ProfviewPanel(context.path);
    const doc = new DocumentWidget({ content, context });
    doc.toolbar.addItem("profview-notebook", notebookButton(this.app, content, false));
    void context.ready.then(() => content.load());
    return doc;
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: "jupyter-profview:plugin",
  description: "Open profiler traces from the file browser in a Profile viewer tab.",
  autoStart: true,
  optional: [IFileBrowserFactory, ILabShell],
  activate: (app: JupyterFrontEnd, browsers: IFileBrowserFactory | null, labShell: ILabShell | null) => {
    const names: string[] = [];
    for (const ft of FILE_TYPES) {
      app.docRegistry.addFileType({
        ...ft, contentType: "file", fileFormat: null, mimeTypes: ["application/octet-stream"], icon: traceIcon,
      });
      names.push(ft.name as string);
    }
    app.docRegistry.addModelFactory(new NoContentModelFactory());
    app.docRegistry.addWidgetFactory(new ProfviewFactory(app, {
      name: FACTORY, label: FACTORY, modelName: MODEL, fileTypes: [...names, "*"], defaultFor: names,
      readOnly: true,
    }));

    // one tab per run directory: opening it again shows the open one
    const runs = new Map<string, MainAreaWidget<ProfviewPanel>>();
    let opened = 0;
    app.commands.addCommand(OPEN_RUN, {
      label: "Open run in profile viewer",
      isVisible: () => {
        const item = browsers?.tracker.currentWidget?.selectedItems().next();
        return Boolean(item && !item.done && item.value.type === "directory");
      },
      execute: (args) => {
        let path = typeof args.path === "string" ? args.path : "";
        if (!path) {
          const item = browsers?.tracker.currentWidget?.selectedItems().next();
          if (!item || item.done) return;
          path = item.value.path;
        }
        if (!labShell) {
          // Notebook 7: its shell keeps the one widget of a page's main area (adding another is
          // ignored), documents open in browser tabs of their own: so does the run, as the viewer page
          window.open(viewerPageUrl(path), "_blank");
          return;
        }
        const open = runs.get(path);
        if (open && !open.isDisposed) {
          labShell.activateById(open.id);
          return;
        }
        const content = new ProfviewPanel(path);
        const main = new MainAreaWidget({ content });
        main.id = `profview-run-${++opened}`;
        main.title.label = PathExt.basename(path) || path;
        main.title.caption = path;
        main.title.closable = true;
        main.title.icon = traceIcon;
        main.toolbar.addItem("profview-notebook", notebookButton(app, content, true));
        runs.set(path, main);
        main.disposed.connect(() => {
          if (runs.get(path) === main) runs.delete(path);
        });
        labShell.add(main, "main");
        void content.load();
      },
    });
    app.commands.addCommand(OPEN_NOTEBOOK, {
      label: "Open in notebook (profview)",
      execute: (args) => openInNotebook(app, String(args.path ?? ""), Boolean(args.isDir)),
    });
    app.contextMenu.addItem({ command: OPEN_RUN, selector: '.jp-DirListing-item[data-isdir="true"]', rank: 3 });
  },
};

export default plugin;
