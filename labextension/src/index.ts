/**
 * Plugins only: wiring of the sidebar, the job view, the notebook command and
 * the settings. Behaviour lives in the modules imported below.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, Notification, WidgetTracker } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { LabIcon } from '@jupyterlab/ui-components';

import { distributeActiveCell } from './distributeform';
import { openNotebook, pickJob, runAction } from './jobactions';
import { JobModel } from './jobmodel';
import { JobView } from './jobview';
import { JobsModel } from './model';
import { activeCount, endedLine, endedSince } from './pure/jobs';
import { setLanguage } from './request';
import { JobsPanel } from './sidebar';
import { RunningItem } from './statusitem';
import { CommandIDs, DEFAULT_SETTINGS, ISettings, PLUGIN_ID } from './tokens';

const ddlIcon = new LabIcon({
  name: 'jupyter-ddl:jobs',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<circle cx="5" cy="6" r="2.5"/><circle cx="5" cy="18" r="2.5"/><circle cx="19" cy="12" r="2.5"/>' +
    '<path d="M7 6.8l10 4.4-.6 1.4L6.4 8.2zM6.4 15.8l10-4.4.6 1.4-10 4.4z"/></g></svg>'
});

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  // i18n: plugin metadata, read before any translator is loaded
  description: 'Distributed training jobs: sidebar, job view with live logs, Distribute this cell.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ISettingRegistry, ICommandPalette, ILayoutRestorer, IStatusBar, ITranslator],
  activate: async (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    registry: ISettingRegistry | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    statusBar: IStatusBar | null,
    translator: ITranslator | null
  ) => {
    // the language JupyterLab is set to (Settings > Language), with this package's
    // catalogs from jupyter_ddl/i18n/lab (the `jupyterlab.locale` entry point)
    const trans = (translator ?? nullTranslator).load('jupyter_ddl');
    setLanguage(translator?.languageCode ?? '');
    const settings: ISettings = { ...DEFAULT_SETTINGS };
    const jobs = new JobsModel(settings.refreshInterval, trans);
    const tracker = new WidgetTracker<MainAreaWidget<JobView>>({ namespace: 'jupyter-ddl' });

    const panel = new JobsPanel(jobs, app.commands, trans);
    panel.title.icon = ddlIcon;
    app.shell.add(panel, 'left', { rank: 650 });
    restorer?.add(panel, panel.id);

    app.commands.addCommand(CommandIDs.openJob, {
      label: args => trans.__('Training job %1', args.name as string),
      execute: args => {
        const name = args.name as string;
        const open = tracker.find(w => w.content.model.name === name);
        if (open) {
          app.shell.activateById(open.id);
          return;
        }
        const content = new JobView(
          new JobModel(name, settings.refreshInterval, jobs, trans),
          app.commands,
          trans
        );
        const view = new MainAreaWidget({ content, toolbar: content.toolbar });
        view.id = `jupyter-ddl-job-${name}`;
        view.title.label = name;
        view.title.icon = ddlIcon;
        void tracker.add(view);
        app.shell.add(view, 'main');
        app.shell.activateById(view.id);
      }
    });

    app.commands.addCommand(CommandIDs.openPanel, {
      label: trans.__('Show training jobs'),
      execute: () => app.shell.activateById(panel.id)
    });

    // a job that ends while this page watches it: said in JupyterLab's notifications
    let seen = new Map<string, boolean>();
    jobs.changed.connect(() => {
      const step = endedSince(seen, jobs.jobs);
      seen = step.seen;
      for (const job of step.ended) {
        const options = {
          autoClose: job.state === 'Failed' ? (false as const) : 8000,
          actions: [
            {
              label: trans.__('Open'),
              caption: trans.__('Open the job view of %1', job.name),
              callback: () => void app.commands.execute(CommandIDs.openJob, { name: job.name })
            }
          ]
        };
        const line = endedLine(job, trans);
        if (job.state === 'Failed') {
          Notification.error(line, options);
        } else if (job.state === 'Succeeded') {
          Notification.success(line, options);
        } else {
          Notification.info(line, options);
        }
      }
    });

    if (statusBar) {
      statusBar.registerStatusItem('jupyter-ddl:running', {
        item: new RunningItem(jobs, () => app.shell.activateById(panel.id), trans),
        align: 'left',
        rank: 40,
        // the status bar shows and hides its items itself: say when this one has news
        isActive: () => activeCount(jobs.jobs) > 0,
        activeStateChanged: jobs.changed
      });
    }

    // the job a command means: the one its arguments name (a row's button), else the
    // job of the job view in front, else the one the user picks (the palette)
    const jobFor = async (args: { name?: unknown; backend?: unknown }, title: string, candidates = jobs.jobs) => {
      const front = app.shell.currentWidget;
      const view = front && tracker.has(front) ? (front as MainAreaWidget<JobView>) : null;
      const named = typeof args.name === 'string' ? args : view ? { name: view.content.model.name } : {};
      return pickJob(named, jobs.jobs, candidates, title, trans);
    };
    const refreshAll = () => {
      void jobs.refresh();
      tracker.forEach(w => void w.content.model.refresh());
    };
    app.commands.addCommand(CommandIDs.cancelJob, {
      label: args =>
        args.name ? trans.__('Cancel training job %1…', args.name as string) : trans.__('Cancel a training job…'),
      caption: trans.__('Stop every replica of a running job (asks first)'),
      execute: async args => {
        const title = trans.__('Cancel which training job?');
        const job = await jobFor(args, title, jobs.jobs.filter(j => !j.finished));
        return job ? runAction('cancel', job, refreshAll, trans) : false;
      }
    });
    app.commands.addCommand(CommandIDs.deleteJob, {
      label: args =>
        args.name ? trans.__('Delete training job %1…', args.name as string) : trans.__('Delete a training job…'),
      caption: trans.__("Remove a job's record, logs and metrics (asks first)"),
      execute: async args => {
        const job = await jobFor(args, trans.__('Delete which training job?'));
        if (!job || !(await runAction('delete', job, refreshAll, trans))) {
          return false;
        }
        tracker.find(w => w.content.model.name === job.name)?.dispose();
        return true;
      }
    });
    app.commands.addCommand(CommandIDs.attachJob, {
      label: args =>
        args.name ? trans.__('Attach to training job %1', args.name as string) : trans.__('Attach to a training job…'),
      caption: trans.__('Open the job view: live logs, replicas and metrics'),
      execute: async args => {
        const job = await pickJob(args, jobs.jobs, jobs.jobs, trans.__('Attach to which training job?'), trans);
        if (job) {
          await app.commands.execute(CommandIDs.openJob, { name: job.name });
        }
      }
    });
    app.commands.addCommand(CommandIDs.openNotebook, {
      label: args =>
        args.name
          ? trans.__('Open the notebook of %1', args.name as string)
          : trans.__('Open the notebook of a training job…'),
      caption: trans.__('Open the notebook a job came from, at its cell'),
      execute: async args => {
        const title = trans.__('Open the notebook of which training job?');
        const job = await jobFor(args, title, jobs.jobs.filter(j => j.notebook));
        if (job) {
          await openNotebook(app, job, trans);
        }
      }
    });

    app.commands.addCommand(CommandIDs.refresh, {
      label: trans.__('Refresh training jobs'),
      execute: () => jobs.refresh()
    });

    app.commands.addCommand(CommandIDs.distributeCell, {
      label: trans.__('Distribute this cell'),
      caption: trans.__(
        'Choose how to run this cell as a distributed training job: puts a %1 line on it',
        '%%distribute'
      ),
      icon: ddlIcon,
      isEnabled: () => notebooks.activeCell?.model.type === 'code',
      execute: () => distributeActiveCell(notebooks, settings, trans)
    });

    if (palette) {
      const category = trans.__('Distributed training');
      palette.addItem({ command: CommandIDs.distributeCell, category });
      palette.addItem({ command: CommandIDs.refresh, category });
      palette.addItem({ command: CommandIDs.openPanel, category });
      for (const command of [CommandIDs.attachJob, CommandIDs.cancelJob, CommandIDs.deleteJob, CommandIDs.openNotebook]) {
        palette.addItem({ command, category });
      }
    }
    app.contextMenu.addItem({ command: CommandIDs.distributeCell, selector: '.jp-CodeCell', rank: 60 });
    notebooks.activeCellChanged.connect(() => app.commands.notifyCommandChanged(CommandIDs.distributeCell));

    if (restorer) {
      void restorer.restore(tracker, {
        command: CommandIDs.openJob,
        args: w => ({ name: w.content.model.name }),
        name: w => w.content.model.name
      });
    }

    if (registry) {
      const apply = (loaded: ISettingRegistry.ISettings) => {
        Object.assign(settings, loaded.composite as unknown as ISettings);
        jobs.interval = settings.refreshInterval;
      };
      try {
        const loaded = await registry.load(PLUGIN_ID);
        apply(loaded);
        loaded.changed.connect(apply);
      } catch (error) {
        console.warn(`jupyter-ddl: settings not loaded, using defaults (${error})`);
      }
    }
  }
};

export default plugin;
